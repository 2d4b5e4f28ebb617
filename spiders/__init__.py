"""Demo Scrapy project for nearDupe: spiders, settings and a bundled offline news site."""
