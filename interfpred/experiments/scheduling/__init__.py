"""E3, scheduling: a simulated serving system (its event loop), the admission policies it compares,
the pair data they are fitted on, and the experiment that runs them."""
