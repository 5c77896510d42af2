"""What-if projection of a running set: when does each member finish if each runs at its predicted rate?

Every member progresses at its predicted, clamped rate (fraction of solo speed) and the rates
change only when a member finishes. The modules differ in what they know about the predictor:

* :mod:`~interfpred.serving.projection.generic`: any rate function, one call per projected
  segment (:func:`project_fluid`), and the one compiled step every projection takes (``advance``);
* :mod:`~interfpred.serving.projection.affine`: an affine predictor over a built-in map, compiled,
  through the map's affine form with the running set's sums updated as members finish
  (:func:`project_affine`, and the unchecked single and stacked forms of the tracker and the
  placement cache);
* :mod:`~interfpred.serving.projection.bounds`: the same at a calibrated latency bound (relative
  or predictive-std scale);
* :mod:`~interfpred.serving.projection.entity`: a predictor with per-entity terms (such as
  :class:`~interfpred.EntityRLS`), compiled;
* :mod:`~interfpred.serving.projection.projector`: :class:`RunningSetProjector`, which holds one
  predictor and picks the fastest of these paths it allows (the tracker owns one);
* :mod:`~interfpred.serving.projection.remaining`: the state a projection starts from, each running
  execution's remaining solo work and the predicted rates, kept on the device's running set.
"""

from interfpred.serving.projection.affine import ProjectionInputs, project_affine
from interfpred.serving.projection.generic import project_fluid
from interfpred.serving.projection.projector import RunningSetProjector

__all__ = ["ProjectionInputs", "RunningSetProjector", "project_affine", "project_fluid"]
