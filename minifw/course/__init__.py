"""`python -m minifw.course`: the course tooling's command, which lives in `minifw_course`."""
