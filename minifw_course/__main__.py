"""`python -m minifw_course ...`, the same command as `python -m minifw.course ...`."""

import sys

from minifw_course.cli import main

if __name__ == "__main__":
    sys.exit(main())
