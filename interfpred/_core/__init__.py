"""The foundation every layer stands on: the numba switch and its cache, atomic file output,
pyarrow access, the JSON file schemas and hyperparameters given as text. Internal to interfpred."""
