-- 001: nothing but a marker that the runner works; each domain adds its own files.
SELECT 1;
