"""The accel Jupyter kernel: `AccelKernel` (kernel.py), meta-commands (magics.py), mime bundles
(display.py), the kernelspec installer (install.py) and a Pygments lexer (highlight.py).

Launch with `python -m accel_kernel.kernel -f CONNECTION_FILE` (what the kernelspec runs);
install the kernelspec with `accel kernel install [--user|--sys-prefix]`. Importing this
package does not import ipykernel: `kernel.py` does, when the kernel starts.
"""
from .install import install_kernelspec

__all__ = ["install_kernelspec"]
