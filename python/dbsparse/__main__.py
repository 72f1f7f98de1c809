import sys

from ._tools import main

sys.exit(main())
