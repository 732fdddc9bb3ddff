"""The post-condition: the written tree re-read independently, and its entries imported."""
