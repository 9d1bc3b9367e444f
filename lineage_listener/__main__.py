"""``python -m lineage_listener`` runs the CLI."""
import sys

from lineage_listener.cli import main

sys.exit(main())
