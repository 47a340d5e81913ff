"""The matmul micro-kernel: an MR x NR block of out, written directly in LLVM vector code.

A BLAS spends nearly all of a large product in one small loop, the micro-kernel: MR rows
of a times NR columns of b, over a block of k, with the MR x NR sums held in vector
registers the whole time. Numba's loops do not get there: LLVM keeps such a block of
scalar sums in scalar registers (or in memory) and never packs them into vectors. So
this file builds the loop itself, with `numba.extending.intrinsic`, as LLVM IR:

    acc[r] = 0 (NR // LANES vectors per row r < MR)
    for k in range(kc):
        b_k = the NR values of b's row k             (NR // LANES vector loads)
        for r in range(MR):
            acc[r] += broadcast(a[r, k]) * b_k        (one fused multiply-add per vector)
    tile = acc

`matmul.py` packs big operands so that both reads are contiguous: a's panel holds
a[r, k] at `k * MR + r`, b's panel holds b[k, c] at `k * NR + c`; a small operand is read
where it lies (any strides for a, contiguous rows for b): the kernel takes both layouts
as addresses and steps. With 256-bit vectors (AVX2) a float64 block is 6 x 8: 12
accumulators, 2 loads of b and one broadcast fill 15 of the 16 vector registers;
AVX-512's 32 registers of 512 bits take 12 x 32 float32 or 8 x 24 float64 (three
vectors per row, `vectors_per_row`). A block on the ragged last rows of out gets a
kernel of fewer rows (a multiple of ROW_STEP). Integer dtypes get a multiply and
an add in place of the fused multiply-add. `transpose_block` (a square block transposed
in vector registers) packs a b stored transposed. Compiled into the kernel that calls
them, so `cache=True` caches them.
"""

from __future__ import annotations

from typing import Any

from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, register_jitable

# The widest vector registers of this CPU: 64 bytes with AVX-512, 32 (AVX2) otherwise;
# where there are fewer, LLVM splits each vector in parts.
VECTOR_BYTES = 64 if "+avx512f" in llvm.get_host_cpu_features().flatten().split(",") else 32
# A block on a ragged edge of rows is computed by a kernel of fewer rows, a multiple of
# ROW_STEP (64 rows of float32: 5 x 12 + 4, not 6 x 12 with 8 rows of waste).
ROW_STEP = 4 if VECTOR_BYTES == 64 else 2
PANEL = 0  # as `rows` of micro_kernel: all the rows of a panel (`panel_rows`)


@register_jitable
def lanes(itemsize: int) -> int:
    """Cells of `itemsize` bytes in one vector register."""
    return VECTOR_BYTES // itemsize


@register_jitable
def vectors_per_row(itemsize: int) -> int:
    """Vector registers per row of the micro-kernel's block: 3 for float64 with AVX-512, else 2.

    Per multiply-add of a vector, a block of 8 x 3 vectors of float64 streams 8 / 24 of a
    cell of a's panel where 12 x 2 streams 12 / 24: a third less to bring from the L2
    cache (2048 x 2048 float64: 132 against 118 GFLOP/s). Float32 keeps 12 x 2: 48
    columns would leave most products' last panel ragged (128 columns: 2.7 panels).
    """
    return 3 if VECTOR_BYTES == 64 and itemsize == 8 else 2


@register_jitable
def panel_width(itemsize: int) -> int:
    """NR: the columns of out one micro-kernel call computes, for cells of `itemsize`."""
    return vectors_per_row(itemsize) * lanes(itemsize)


@register_jitable
def panel_rows(itemsize: int) -> int:
    """MR: the rows of out one micro-kernel call computes, for cells of `itemsize`.

    As many as the vector registers hold beside a load of each vector of b and a
    broadcast of a: 12 x 2 + 3 of AVX-512's 32 registers (8 x 3 + 4 for float64),
    6 x 2 + 3 of AVX2's 16.
    """
    if VECTOR_BYTES == 32:
        return 6
    return 12 if vectors_per_row(itemsize) == 2 else 8


def _micro_kernel(
    typingctx: Any, rows: Any, dtype_of: Any, a: Any, a_row: Any, a_k: Any, b: Any,
    b_k: Any, kc: Any, dest: Any, d_row: Any, add: Any,
) -> Any:  # fmt: skip
    """D[r*d_row + c] (+)= sum_k A[r*a_row + k*a_k] * B[k*b_k + c], `+=` if `add`.

    For r < rows (a constant: a multiple of ROW_STEP, or PANEL for MR rows: MR and NR
    depend on the dtype), c < NR and k < kc. A, B
    and D are the cells at byte addresses `a`, `b` and `dest` (integers: an operand's
    own storage, a packed panel of the workspace or a tile alike), of the dtype of the
    array `dtype_of` (only its dtype is used); D's rows are contiguous. A packed panel
    of a has a_row = 1 and a_k = MR, one of b has b_k = NR. Nothing is bounds-checked:
    the caller picks addresses with room for the whole block (matmul.py).
    """
    dtype = dtype_of.dtype
    most = panel_rows(dtype.bitwidth // 8)
    if not isinstance(rows, types.IntegerLiteral) or not 0 <= rows.literal_value <= most:
        raise TypeError(f"micro_kernel: rows must be a constant from 0 to {most}, not {rows}")
    block_rows = rows.literal_value or most
    index = types.intp
    sig = types.void(rows, dtype_of, *[index] * 8, types.boolean)

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> Any:
        a_address, a_row_step, a_k_step, b_address, b_k_step = args[2:7]
        depth, dest_address, dest_row, accumulate = args[7:]
        cell_bytes = dtype.bitwidth // 8
        width = lanes(cell_bytes)
        cell = context.get_data_type(dtype)
        vector = ir.VectorType(cell, width)
        a_ptr, b_ptr, dest_ptr = (
            builder.inttoptr(address, cell.as_pointer())
            for address in (a_address, b_address, dest_address)
        )
        multiply_add = _multiply_add(builder, dtype, vector)
        kernel = _Loop(builder, vector, panel_width(cell_bytes), cell_bytes, block_rows)
        sums = kernel.run(depth, (a_ptr, a_row_step, a_k_step), (b_ptr, b_k_step), multiply_add)
        if accumulate.type != ir.IntType(1):
            accumulate = builder.icmp_unsigned("!=", accumulate, ir.Constant(accumulate.type, 0))
        with builder.if_else(accumulate) as (adding, assigning):
            with adding:
                kernel.write(sums, dest_ptr, dest_row, _adder(builder, dtype))
            with assigning:
                kernel.write(sums, dest_ptr, dest_row, None)
        return context.get_dummy_value()

    return sig, codegen


micro_kernel: Any = intrinsic(prefer_literal=True)(_micro_kernel)


def _prefetch(typingctx: Any, array: Any, at: Any) -> Any:
    """Asks the CPU to bring the cache line holding array[at] into its L2 cache."""
    sig = types.void(array, types.intp)

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> Any:
        data = context.make_array(array)(context, builder, args[0]).data
        cell = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn_type = ir.FunctionType(ir.VoidType(), [cell.type, i32, i32, i32])
        name = "llvm.prefetch.p0i8"
        fn = builder.module.globals.get(name) or ir.Function(builder.module, fn_type, name)
        builder.call(fn, [cell, ir.Constant(i32, 0), ir.Constant(i32, 2), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


prefetch: Any = intrinsic(_prefetch)


def _transpose_block(
    typingctx: Any, dtype_of: Any, source: Any, source_row: Any, dest: Any, dest_row: Any
) -> Any:  # fmt: skip
    """D[j*dest_row + i] = S[i*source_row + j] for i, j < L: an L x L block, L = lanes.

    S and D are the cells at byte addresses `source` and `dest`, of the dtype of the
    array `dtype_of`; rows are `*_row` cells apart. L vector loads, L stores, and
    between them log2(L) rounds of two-vector shuffles: round s (L/2, L/4, ..., 1)
    swaps, in every aligned 2s x 2s block, its top-right and bottom-left s x s blocks
    (after the last round every cell has crossed the diagonal). Packs a b stored
    transposed (`w.T`) into panels: reading it one cell at a time took twice as long.
    """
    dtype, index = dtype_of.dtype, types.intp
    sig = types.void(dtype_of, index, index, index, index)

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> Any:
        _, source_address, source_step, dest_address, dest_step = args
        cell_bytes = dtype.bitwidth // 8
        width = lanes(cell_bytes)
        cell = context.get_data_type(dtype)
        loop = _Loop(builder, ir.VectorType(cell, width), width, cell_bytes, width)  # its loads
        source_ptr = builder.inttoptr(source_address, cell.as_pointer())
        dest_ptr = builder.inttoptr(dest_address, cell.as_pointer())
        rows = [
            loop.load(builder.gep(source_ptr, [builder.mul(source_step, loop.const(i))]), 0)
            for i in range(width)
        ]
        half = width // 2
        while half:
            rows = _swap_blocks(builder, rows, half)
            half //= 2
        for j, row in enumerate(rows):
            loop.store(row, builder.gep(dest_ptr, [builder.mul(dest_step, loop.const(j))]), 0)
        return context.get_dummy_value()

    return sig, codegen


def _swap_blocks(builder: ir.IRBuilder, rows: list[Any], s: int) -> list[Any]:
    """Rows of the matrix with every aligned 2s x 2s block's off-diagonal s x s blocks swapped."""
    width, i32 = len(rows), ir.IntType(32)
    mask_type = ir.VectorType(i32, width)
    # Cells 0..width-1 pick from the upper row of a pair, width..2 width-1 from the lower.
    upper = [c if c // s % 2 == 0 else width + c - s for c in range(width)]
    lower = [c + s if c // s % 2 == 0 else width + c for c in range(width)]
    swapped = list(rows)
    for i in range(width):
        if i // s % 2 == 0:
            pair = rows[i], rows[i + s]
            swapped[i] = builder.shuffle_vector(*pair, ir.Constant(mask_type, upper))
            swapped[i + s] = builder.shuffle_vector(*pair, ir.Constant(mask_type, lower))
    return swapped


transpose_block: Any = intrinsic(_transpose_block)


def _adder(builder: ir.IRBuilder, dtype: Any) -> Any:
    """A function (x, y) -> x + y on vectors of `dtype`."""
    if isinstance(dtype, types.Float):
        return builder.fadd
    return builder.add


def _multiply_add(builder: ir.IRBuilder, dtype: Any, vector: ir.VectorType) -> Any:
    """A function (x, y, acc) -> acc + x * y on vectors: LLVM's fma for floats."""
    if isinstance(dtype, types.Float):
        bits = dtype.bitwidth
        fma_type = ir.FunctionType(vector, [vector, vector, vector])
        name = f"llvm.fma.v{vector.count}f{bits}"
        fma = builder.module.globals.get(name) or ir.Function(builder.module, fma_type, name)
        return lambda x, y, acc: builder.call(fma, [x, y, acc])
    return lambda x, y, acc: builder.add(acc, builder.mul(x, y))


class _Loop:
    """Emits the micro-kernel's k loop, its accumulators carried as vector phi nodes."""

    def __init__(
        self, builder: ir.IRBuilder, vector: ir.VectorType, nr: int, cell_bytes: int, rows: int
    ) -> None:
        self.builder, self.vector, self.nr, self.cell_bytes = builder, vector, nr, cell_bytes
        self.index, self.rows = ir.IntType(64), rows

    def const(self, value: int) -> ir.Constant:
        """An index constant."""
        return ir.Constant(self.index, value)

    def load(self, ptr: Any, at: int) -> Any:
        """The vector of cells ptr[at : at + lanes] (no alignment assumed beyond a cell's)."""
        b = self.builder
        cell = b.gep(ptr, [self.const(at)])
        return b.load(b.bitcast(cell, self.vector.as_pointer()), align=self.cell_bytes)

    def store(self, value: Any, ptr: Any, at: int) -> None:
        """ptr[at : at + lanes] = value."""
        b = self.builder
        cell = b.gep(ptr, [self.const(at)])
        b.store(value, b.bitcast(cell, self.vector.as_pointer()), align=self.cell_bytes)

    def write(self, sums: list[list[Any]], dest: Any, row_step: Any, add: Any) -> None:
        """dest[r*row_step + c] = sums[r][c] (+= where `add`, a vector x, y -> x + y)."""
        b, width = self.builder, self.vector.count
        for r, row in enumerate(sums):
            dest_r = b.gep(dest, [b.mul(row_step, self.const(r))])
            for v, total in enumerate(row):
                if add is not None:
                    total = add(total, self.load(dest_r, v * width))
                self.store(total, dest_r, v * width)

    def broadcast(self, scalar: Any) -> Any:
        """A vector whose every lane is `scalar`."""
        b, undefined = self.builder, ir.Constant(self.vector, ir.Undefined)
        first = b.insert_element(undefined, scalar, ir.Constant(ir.IntType(32), 0))
        all_first = ir.Constant(ir.VectorType(ir.IntType(32), self.vector.count), None)
        return b.shuffle_vector(first, undefined, all_first)

    def run(self, depth: Any, a: Any, b_: Any, multiply_add: Any) -> list[list[Any]]:
        """The rows x (NR / lanes) vector sums over k < depth (zeros if depth <= 0).

        `a` is (pointer, row step, k step), `b_` is (pointer, k step).
        """
        b, zero = self.builder, ir.Constant(self.vector, None)
        per_row = self.nr // self.vector.count
        (a_ptr, a_row, a_k), (b_ptr, b_k) = a, b_
        a_rows = [b.gep(a_ptr, [b.mul(a_row, self.const(r))]) for r in range(self.rows)]
        entry = b.block
        body, after = b.append_basic_block("micro.k"), b.append_basic_block("micro.done")
        b.cbranch(b.icmp_signed(">", depth, self.const(0)), body, after)
        b.position_at_end(body)
        k = b.phi(self.index)
        carried = [[b.phi(self.vector) for _ in range(per_row)] for _ in range(self.rows)]
        b_row, a_column = b.gep(b_ptr, [b.mul(k, b_k)]), b.mul(k, a_k)
        b_k = [self.load(b_row, v * self.vector.count) for v in range(per_row)]
        updated = []
        for r in range(self.rows):
            a_rk = self.broadcast(b.load(b.gep(a_rows[r], [a_column])))
            updated.append([multiply_add(a_rk, b_k[v], carried[r][v]) for v in range(per_row)])
        k_next = b.add(k, self.const(1))
        b.cbranch(b.icmp_signed("<", k_next, depth), body, after)
        k.add_incoming(self.const(0), entry)
        k.add_incoming(k_next, body)
        for phis, values in zip(carried, updated, strict=True):
            for phi, value in zip(phis, values, strict=True):
                phi.add_incoming(zero, entry)
                phi.add_incoming(value, body)
        b.position_at_end(after)
        sums = [[b.phi(self.vector) for _ in range(per_row)] for _ in range(self.rows)]
        for phis, values in zip(sums, updated, strict=True):
            for phi, value in zip(phis, values, strict=True):
                phi.add_incoming(zero, entry)
                phi.add_incoming(value, body)
        return sums


__all__ = [
    "PANEL",
    "ROW_STEP",
    "VECTOR_BYTES",
    "lanes",
    "micro_kernel",
    "panel_rows",
    "panel_width",
    "prefetch",
    "transpose_block",
    "vectors_per_row",
]
