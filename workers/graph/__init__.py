"""The graph: schema, writes and reads over Bolt (Neo4j 5, or the embedded ArcadeDB)."""
