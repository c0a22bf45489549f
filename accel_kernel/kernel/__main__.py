"""`python -m accel_kernel.kernel -f CONNECTION_FILE`: start the accel kernel (the kernelspec's
argv). Any other ipykernel application option works too."""
from ipykernel.kernelapp import IPKernelApp

from .kernel import AccelKernel

if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=AccelKernel)
