"""In the aggregate and plot jobs: tables -> pages and figures for people."""
