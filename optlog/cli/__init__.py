"""The command-line face: parses arguments, calls the service layer, prints text or JSON."""
