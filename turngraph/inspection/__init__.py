"""Tools for people: the HTML view, export and import, the Neo4j Browser style."""
