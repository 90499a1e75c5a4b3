"""Built-in adapters for the external rollout backends (imported on demand)."""
