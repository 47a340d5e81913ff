"""Expert kernels that FastOps calls when this folder is present (never a course task).

Register-tiled matmul (`matmul.py`) and the SIMD e^x (`simd_math.py`). Student
repositories do not contain this folder: there FastOps runs the kernels students write.
"""
