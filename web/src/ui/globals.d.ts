interface Window { carlab: any }
