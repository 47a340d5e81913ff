"""Training scripts and the app built on minifw (minifw never imports this package)."""
