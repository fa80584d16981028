import sys

from learner.cli import main

sys.exit(main())
