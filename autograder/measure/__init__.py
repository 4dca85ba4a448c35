"""Measure: the evidence for the book. Verified timings beside cuBLAS (bench), tile searches
(tune, tune_plans), the ablation of the last FP32 step, Nsight Compute counters (profile) and
the compiled main loop's instruction mix (sass); typed_csv reads their CSV rows back.

It may use judge, run, isolate and ladder; never grade or course.
"""
