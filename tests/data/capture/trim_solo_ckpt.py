"""Trim Model Analyzer's solo checkpoint to the measurements the tests match (run: python trim_solo_ckpt.py IN OUT).

Keeps, for resnet50_libtorch and vgg19_libtorch, the configurations whose instance count and max batch
size the concurrent checkpoint beside this script uses, at client concurrencies 1, 2, 4 and 8; every
kept entry is copied unchanged.
"""

import json
import sys

KEEP_CONFIGS = {  # (instance count, max batch size); None: the default configuration (no instanceGroup)
    "resnet50_libtorch": {None, (1, 1), (1, 2), (2, 1)},
    "vgg19_libtorch": {None, (1, 1), (1, 2), (1, 4), (2, 1)},
}
KEEP_CONCURRENCY = {1, 2, 4, 8}


def key(config):
    groups = config.get("instanceGroup")
    return None if not groups else (sum(g["count"] for g in groups), config["maxBatchSize"])


def main(src, dst):
    with open(src) as fh:
        doc = json.load(fh)
    results = doc["ResultManager.results"]["_results"]
    for model, variants in results.items():
        for name in list(variants):
            run_config, measurements = variants[name]
            if key(run_config["_model_run_configs"][0]["_model_config"]) not in KEEP_CONFIGS[model]:
                del variants[name]
                continue
            for m in list(measurements):
                conc = measurements[m]["_model_config_measurements"][0]["_model_specific_pa_params"]
                if conc["concurrency-range"] not in KEEP_CONCURRENCY:
                    del measurements[m]
    with open(dst, "w") as fh:
        json.dump(doc, fh, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:3])
