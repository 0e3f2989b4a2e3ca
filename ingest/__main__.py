from ingest.cli import main

raise SystemExit(main())
