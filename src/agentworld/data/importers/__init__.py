"""Importers: public trajectory datasets read into our trajectory records."""
