"""Expert kernels that FastOps calls when this folder is present (never a course task).

What lives where:
- `line_loops.py`: map, zip and reduce over lines of cells, each line in a loop
  generated per op code so that it runs in SIMD lanes (`GENERATED_SOURCE`), with
  serial twins for small inputs.
- `matmul.py`: the packed matmul (`run_matmul` here), BLAS-style: operands copied into
  panels, blocks of out computed by the micro-kernel of `micro_kernel.py`, written in
  LLVM vector code.
- `simd_math.py`: e^x from multiply-adds, so that loops calling it vectorise.
- `fused_update.py`: the SGD update `p -= g * lr` and one Adam step, one kernel each.
- `fused_loss.py`: softmax cross-entropy over class indices, one kernel each way
  (`nn/losses.py` calls it for small batches).
- `fused_fold.py`: the fold (col2im) of a 2-D unfold's backward in one kernel
  (`nn/conv.py` calls it for small folds whose windows overlap).
- `fused_pool.py`: 2-D max pooling over windows that do not overlap, one kernel each
  way (`nn/pooling.py` calls it).
- `ahead.py`: on a process's first kernel compile, a helper process that compiles the
  kernels training programs launch first into the disk cache, on another core.
- `__main__.py`: `python -m minifw.fast_paths` prints every generated source.

Student repositories do not contain this folder: there `FastOps` runs the readable
kernels of `fast_ops.py` (the ones students write), which compute the same cells.
The four entry points below (and `matmul_work`, a product's work as FastOps counts
it) are all that `FastOps` calls; each takes the kernel contract's arguments and
`parallel` (False runs the serial twins).
"""

from minifw.fast_paths import ahead
from minifw.fast_paths.line_loops import run_map, run_reduce, run_zip
from minifw.fast_paths.matmul import matmul as run_matmul
from minifw.fast_paths.matmul import work as matmul_work

ahead.listen()

__all__ = ["matmul_work", "run_map", "run_matmul", "run_reduce", "run_zip"]
