"""What a scheduler embeds: the running set and its streaming features, the what-if projection
and its compiled form, :class:`~interfpred.serving.tracker.ColocationTracker` per device,
placement and :class:`~interfpred.serving.fleet.Fleet` over many devices."""
