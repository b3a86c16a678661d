"""gatelab — runs, metrics, traces and models of the gatelab C harness, from Python.

    import sys; sys.path.insert(0, "GATELAB/scripts/python")   # or PYTHONPATH=GATELAB/scripts/python
    import gatelab
    df = gatelab.runs(results="results", experiment="demo-copy")  # one row per run, params as columns
    run = gatelab.load_run("demo-copy-satformer")               # id, unique prefix or run folder
    alpha = run.trace["sat/alpha"]                              # numpy, alpha.axes = (step, layer, token, kv_head)
    model = run.model()                                         # torch.nn.Module (python3-torch)
    out, cache = model.run_with_cache(text)                     # gatelab.cache.ActivationCache: decompose_resid, …

Needs Debian's python3-numpy, python3-h5py, python3-pandas; the model part python3-torch.
Reads only: nothing here writes to a registry, trace or checkpoint.  docs/python.md has the
details and a worked example.
"""
from .official import from_official_tsa, to_official_tsa
from .registry import RegistryError, metrics, runs
from .run import Config, Run, load_run
from .trace import Named, Trace

__all__ = ["runs", "metrics", "load_run", "Run", "Config", "Trace", "Named", "RegistryError"]
