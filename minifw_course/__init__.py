"""Course tooling: the task map, the assignment generator and the grader."""
