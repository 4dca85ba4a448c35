"""The autograder as plain pytest, for classroom CI services:

    pytest autograder/grade/tests --submission PATH --assignment STEP [--junitxml report.xml]

PATH is a .cu file, a notebook, or a folder holding one. The tests are the
exercise notebooks' grade cells (autograder/grade/rubric.py), with their points
recorded in the JUnit XML report as properties of each test case.
"""
