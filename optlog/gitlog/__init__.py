"""Git: decisions committed through a private index, and the decision timeline read back."""
