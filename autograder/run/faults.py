"""What a backend raises when it caught a kernel making a bad access: its own module,
so that the backends (autograder.run.backends) and the CPU backend they load
(autograder.run.cpu) both import it downward, neither from the other."""


class KernelFault(Exception):
    """A backend caught the kernel making a bad memory access; str() says which."""
