import sys

from ingest.jvm import main

sys.exit(main())
