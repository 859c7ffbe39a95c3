"""The qoelab command line (skeleton)."""

import sys


def main(argv=None):
    print("qoelab skeleton")
    return 0


if __name__ == "__main__":
    sys.exit(main())
