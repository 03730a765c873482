"""The dashboard's panes, one module each: a pane owns its widgets, its state and how it paints
what a load brought; it tells the app what it needs by a typed message (`optlog.tui.messages`)."""
