import sys

from protocol.lifeline import hold

hold()  # a learner we started ends (SIGTERM: final save) when whoever started it ends

from learner.cli import main  # noqa: E402

sys.exit(main())
