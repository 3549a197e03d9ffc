"""`python -m pathkit_core.cli`: the pathkit command line (for accelerate launch -m and torchrun -m)."""

from pathkit_core.cli import main

if __name__ == "__main__":
    main()
