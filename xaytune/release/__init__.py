"""What leaves the machine: a release bundle under its disclosure, and a signed tree."""
