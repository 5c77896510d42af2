"""``interfpred serve``: a :class:`~interfpred.Fleet` as an HTTP service that schedulers call.

:mod:`.spec` reads the fleet description (nodes, devices, GPU types), :mod:`.journal` keeps the
state durable (a snapshot and an fsynced append-only log of starts, finishes and cancels, replayed
on start), :mod:`.core` answers every question as the library does, :mod:`.extender` speaks the
kube-scheduler extender protocol, and :mod:`.app` puts them behind HTTP (Starlette, the
``interfpred[serve]`` extra). Only :mod:`.app` needs the extra. docs/serve.md is the guide.
"""
