"""Who may read the lineage (``serve --access FILE``): identities, grants, the one visibility rule,
the audit and the UI's login (docs/security.md)."""
