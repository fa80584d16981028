import sys

from actor.cli import main

sys.exit(main())
