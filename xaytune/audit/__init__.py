"""Re-verifying an output tree from its files alone, and comparing it again."""
