"""The output tree of a run: intent, manifest, evidence cache, looks, gathering."""
