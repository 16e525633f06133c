from llmbench.history.sweep import config_sha256

# The sweep's identity (stamped by the aggregate job) and the optional history: add the
# finished sweep to it, and draw trends of step time over the sweeps it holds (the config
# check refused history.add without history.path, as `llmbench plan` does).
HISTORY = CONFIG["history"]
CONFIG_SHA256 = config_sha256(CONFIG)


def get_history_outputs():
    outputs = []
    if HISTORY["add"]:
        outputs.append("results/history/added.json")
    if HISTORY["path"]:
        outputs.append("results/history/trends")
    return outputs


def get_history_trend_inputs(wildcards):
    inputs = {
        "runs": "results/tables/runs.parquet",
        "sweep": "results/tables/sweep.json",
    }
    if HISTORY["add"]:  # the trends then include this sweep as stored
        inputs["added"] = "results/history/added.json"
    return {**inputs, **get_reference_input(wildcards)}


def get_trend_labels(wildcards):
    workload, size, dtype, scale = wildcards.name.split("_")[:4]
    return {
        "workload": workload,
        "size": size,
        "dtype": dtype,
        "GPU type": scale.split("x")[0],
        "scale": scale.split("x", 1)[1],
        "content": "step time over sweeps",
    }
