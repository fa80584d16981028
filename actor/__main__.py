import os
import sys

# The policy steps small matrices in numpy: BLAS worker threads only contend with the game and the other
# bots on a shared machine. Set before numpy loads; the environment may still say otherwise.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from protocol.lifeline import hold  # noqa: E402

hold()  # an actor we started ends (SIGTERM: flush, bye) when whoever started it ends

from actor.cli import main  # noqa: E402

sys.exit(main())
