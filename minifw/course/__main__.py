"""Run the course tooling (`minifw_course`) as `python -m minifw.course ...`.

The one upward import of minifw: this entry exists only so the documented command keeps
working; nothing in minifw imports it, and `import minifw` never loads it.
"""

import sys

from minifw_course.cli import main

if __name__ == "__main__":
    sys.exit(main())
