"""Grade: points for a class. Finds each student's submission, grades it with the rubric
through the judge, keeps every grade in an atomically written gradebook, and spreads a class
over GPUs (batch) or a Slurm array (slurm/); tests/ is the same rubric as a pytest plugin.

It may use judge, run, isolate and ladder; never measure or course.
"""
