"""`pathkit bench` and `pathkit compare`, each module exposing `register(app)`."""
