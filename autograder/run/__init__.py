"""Run: turn a kernel's source into something launchable and launch it, on the GPU through
CuPy and NVRTC or on the CPU as confined native code (backends, compiler, cpu, contract, kernel).

It knows how to launch and synchronize, never whether a result is right; it may use isolate
and ladder.
"""
