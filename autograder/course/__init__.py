"""Course: what learners and instructors touch. The command line (cli), the façade the
notebooks call (exercise), their widgets (explorers), and the notebooks' generator
(notebooks, assignments). It may use every layer below.
"""
