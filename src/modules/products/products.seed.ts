/** The small demo catalogue loaded into an empty catalogue when SEED_DEMO_CATALOG is on. */
export const DEMO_CATALOG = [
  { sku: 'DEMO-TSHIRT', name: 'Cotton T-Shirt', price: '19.99', stock: 100 },
  { sku: 'DEMO-HOODIE', name: 'Hooded Sweatshirt', price: '49.90', stock: 50 },
  { sku: 'DEMO-MUG', name: 'Ceramic Mug', price: '9.50', stock: 200 },
  { sku: 'DEMO-CAP', name: 'Baseball Cap', price: '14.00', stock: 75 },
  { sku: 'DEMO-BOTTLE', name: 'Steel Water Bottle', price: '24.95', stock: 60 },
  { sku: 'DEMO-NOTEBOOK', name: 'Dotted Notebook', price: '7.25', stock: 150 },
  { sku: 'DEMO-BACKPACK', name: 'Everyday Backpack', price: '89.00', stock: 25 },
  { sku: 'DEMO-STICKERS', name: 'Sticker Pack', price: '3.99', stock: 500 },
] as const;
