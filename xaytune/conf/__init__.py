"""The Hydra config tree (a package so it is found when xaytune is installed)."""
