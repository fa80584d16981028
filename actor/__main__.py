import sys

from protocol.lifeline import hold

hold()  # an actor we started ends (SIGTERM: flush, bye) when whoever started it ends

from actor.cli import main  # noqa: E402

sys.exit(main())
