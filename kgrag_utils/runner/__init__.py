"""The batch runner: executes the notebooks with papermill, one run or a grid from a YAML config.

Each run gets a fresh `python3` kernel whose working directory is the notebook's folder, a run name
(derived from the notebook and its parameters unless given), an executed copy and a log under
`runs/<grid>/`, and a run record under `results/<run_name>/` (written by the notebook itself through
`kgrag_utils.records.RunRecorder`). A run whose record says "ok" with the same parameters is skipped
(resume); a failed run is recorded with its error and the grid goes on. The grid ends with a summary
table, printed and saved as CSV and Markdown.

One responsibility per module, in the order a run meets them:

- `kgrag_utils.notebook_params` (below the runner and the method registry): a notebook's parameters cell;
- `checks`: everything a run is checked for before a kernel starts;
- `kernel`: the kernel a run executes in, and `execute` (papermill);
- `execute`: one run (`run_notebook`: lock, skip, execute, record a failure) and `RunOutcome`;
- `grid`: grids (load, expand, shard, GPUs per worker, `run_grid`, `report_grid`);
- `grid_summary`: the grid's summary table.

The names below are the runner's public face (`from kgrag_utils.runner import run_grid`).
"""

from ..notebook_params import notebook_parameters, resolve_notebook, validate_parameters
from .checks import check_data_present, check_known_names, check_method_config, check_run_parameters
from .execute import DEFAULT_TIMEOUT, REPORT_METHOD, RunOutcome, run_name_for, run_notebook
from .grid import (expand_grid, grid_path, load_grid, outcomes_from_records, parse_shard, report_grid, run_grid,
                   shard_runs, visible_gpus, worker_gpus)
from .grid_summary import SUMMARY_COLUMNS, summary_row, summary_table, write_summary
from .kernel import KERNEL_START_TIMEOUT

__all__ = ["DEFAULT_TIMEOUT", "KERNEL_START_TIMEOUT", "REPORT_METHOD", "RunOutcome", "SUMMARY_COLUMNS",
           "check_data_present", "check_known_names", "check_method_config", "check_run_parameters", "expand_grid",
           "grid_path", "load_grid", "notebook_parameters", "outcomes_from_records", "parse_shard", "report_grid",
           "resolve_notebook", "run_grid", "run_name_for", "run_notebook", "shard_runs", "summary_row",
           "summary_table", "validate_parameters", "visible_gpus", "worker_gpus", "write_summary"]
