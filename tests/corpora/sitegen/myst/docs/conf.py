project = "Example"
extensions = ["myst_parser", "sphinx_design"]
