"""Text embeddings for recall's semantic signal: a local static model or an endpoint."""
