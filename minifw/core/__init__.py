"""Layer 0: scalar math and the op table, the autodiff engine, strided data, dtypes, RNG."""
