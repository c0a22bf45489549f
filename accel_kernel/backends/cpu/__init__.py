"""The `cpu` back end (numba): flat programs compiled to `@njit` Python kernels.

Scalar code: `scalar_source` translates a `ScalarFn` (a map's scalar lambda), lowered to the
first-order scalar IR (`ir/scalar_lower.py`), into the Python source of one numba function with accel's scalar semantics (operators and builtins in
`scalar_arith`, the writing of statements and names in `python_code`); `errors` is the table
of error sites that generated code reports through its `err` array, whose cancel slot the
compiled loops poll (`polling`: the rewrites; `stop_flag`: the atomic read, imported by the
generated modules, as is `unchecked`: the kernels' reads at indices in bounds by
construction). numba is imported only by the modules that compile, so importing this
package stays light.
"""
