"""Expert kernels that FastOps calls when this folder is present (never a course task).

What lives where:
- `line_loops.py`: map, zip and reduce over lines of cells, each line in a loop
  generated per op code so that it runs in SIMD lanes (`GENERATED_SOURCE`), with
  serial twins for small inputs.
- `matmul.py`: the register-tiled matmul and its layout-picking entry `matmul`
  (`run_matmul` here).
- `simd_math.py`: e^x from multiply-adds, so that loops calling it vectorise.
- `fused_update.py`: the SGD update `p -= g * lr` as one kernel.
- `__main__.py`: `python -m minifw.fast_paths` prints every generated source.

Student repositories do not contain this folder: there `FastOps` runs the readable
kernels of `fast_ops.py` (the ones students write), which compute the same cells.
The four entry points below are all that `FastOps` calls; each takes the kernel
contract's arguments and `parallel` (False runs the serial twins).
"""

from minifw.fast_paths.line_loops import run_map, run_reduce, run_zip
from minifw.fast_paths.matmul import matmul as run_matmul

__all__ = ["run_map", "run_matmul", "run_reduce", "run_zip"]
